# Stages 3-5: idle power of each device, then energy and time per image (and per training
# sample) of every model x method x batch size. Each device measures one job at a time (its
# measuring slot, common.smk's MEASURING); GPUs measure at once, a CPU job takes every slot
# and core. A job measures one model ({job}: its name), or one method of it where a pool
# shares few models ({job}: model+method; common.smk's JOBS).


rule idle:
    output:
        "results/idle/{device}.parquet",
    log:
        "logs/idle/{device}.log",
    conda:
        ENV
    threads: get_measure_threads
    resources:
        **MEASURING,
    params:
        settings=get_idle_settings(),
        torch_device=get_torch_device,
        pin=get_pin_option,
    shell:
        "joulebench idle --device-label={wildcards.device:q} "
        "--device={params.torch_device:q} --settings={params.settings:q} "
        "{params.pin} --output={output:q} > {log:q} 2>&1"


rule profile:
    input:
        idle="results/idle/{device}.parquet",
        workload=get_workload_files,
    output:
        rows="results/profile/{device}/rows/{job}.parquet",
        repeats="results/profile/{device}/repeats/{job}.parquet",
        trace="results/profile/{device}/trace/{job}.parquet",
    log:
        "logs/profile/{device}/{job}.log",
    priority: get_profile_priority
    conda:
        ENV
    threads: get_measure_threads
    resources:
        **MEASURING,
        mem_mb=8000,
    params:
        spec=get_profile_spec,
        pin=get_pin_option,
        model=get_job_model,
    shell:
        "joulebench profile-job --device-label={wildcards.device:q} "
        "--spec={params.spec:q} --idle={input.idle:q} --threads={threads} {params.pin} "
        "--output={output.rows:q} --repeats-output={output.repeats:q} "
        "--trace-output={output.trace:q} -- {params.model:q} > {log:q} 2>&1"


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
        "joulebench concat profile --output={output:q} -- {input:q} > {log:q} 2>&1"


# The power trace the figures draw (figures.trace: one job's) under one name, so a replot of
# this run's summary (from_summary) draws the same one.
rule drawn_trace:
    input:
        get_job_trace,
    output:
        DRAWN_TRACE,
    log:
        "logs/profile/drawn_trace.log",
    localrule: True
    conda:
        ENV
    shell:
        "joulebench concat trace --output={output:q} -- {input:q} > {log:q} 2>&1"
