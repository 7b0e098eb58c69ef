# Stage 8: Pareto front, efficiency index, grades, energy index; fits of energy and accuracy;
# each model's least-energy configurations.


rule score:
    input:
        get_summary,
    output:
        "results/scores.parquet",
    log:
        "logs/score.log",
    localrule: True
    conda:
        ENV
    params:
        settings=get_score_settings(),
    shell:
        "joulebench score --settings={params.settings:q} --output={output:q} "
        "-- {input:q} > {log:q} 2>&1"


rule fits:
    input:
        get_summary,
    output:
        expand("results/fits/{table}.parquet", table=FIT_TABLES),
    log:
        "logs/fits.log",
    localrule: True
    conda:
        ENV
    params:
        settings=get_fits_settings(),
        outdir=get_fits_outdir,
    shell:
        "joulebench fits --settings={params.settings:q} --outdir={params.outdir:q} "
        "-- {input:q} > {log:q} 2>&1"


rule best_configs:
    input:
        get_summary,
    output:
        "results/best_configs.parquet",
    log:
        "logs/best_configs.log",
    localrule: True
    conda:
        ENV
    params:
        settings=get_best_configs_settings(),
    shell:
        "joulebench best-configs --settings={params.settings:q} --output={output:q} "
        "-- {input:q} > {log:q} 2>&1"
