# Stages 3-4: idle power of each device, then energy and time per image of every
# model x method x batch size. Measuring jobs never overlap on one host: each takes
# the `measuring` resource (limited to 1 in profiles/default), and CPU jobs all cores.


rule idle:
    output:
        "results/idle/{device}.parquet",
    log:
        "logs/idle/{device}.log",
    conda:
        ENV
    threads: get_measure_threads
    resources:
        measuring=1,
    params:
        torch_device=get_torch_device,
        options=get_meter_options,
        duration_s=config["idle"]["duration_s"],
    shell:
        "python -m joulebench idle --device-label {wildcards.device} "
        "--device {params.torch_device} --duration-s {params.duration_s} {params.options} "
        "--output {output} > {log} 2>&1"


rule profile:
    input:
        idle="results/idle/{device}.parquet",
        workload=get_workload_files,
    output:
        rows="results/profile/{device}/rows/{model}.parquet",
        repeats="results/profile/{device}/repeats/{model}.parquet",
        trace="results/profile/{device}/trace/{model}.parquet",
    log:
        "logs/profile/{device}/{model}.log",
    conda:
        ENV
    threads: get_measure_threads
    resources:
        measuring=1,
        mem_mb=8000,
    params:
        spec=get_profile_spec,
    shell:
        "python -m joulebench profile-job {wildcards.model:q} --device-label {wildcards.device} "
        "--spec {params.spec:q} --idle {input.idle} --threads {threads} "
        "--output {output.rows} --repeats-output {output.repeats} "
        "--trace-output {output.trace} > {log} 2>&1"


rule profile_table:
    input:
        get_profile_rows,
    output:
        "results/profile.parquet",
    log:
        "logs/profile/concat.log",
    localrule: True
    conda:
        ENV
    shell:
        "python -m joulebench concat profile {input} --output {output} > {log} 2>&1"
