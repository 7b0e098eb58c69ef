# Stage 1: static properties per model (params, input config, FLOPs, activations).


rule catalog_part:
    output:
        "results/catalog/part-{part}.parquet",
    log:
        "logs/catalog/part-{part}.log",
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=8000,
    params:
        settings=get_catalog_part_settings(),
        models=get_catalog_part_models,
    shell:
        "joulebench catalog --threads={threads} --settings={params.settings:q} "
        "--output={output:q} -- {params.models} > {log:q} 2>&1"


rule catalog:
    input:
        get_catalog_parts,
    output:
        "results/catalog.parquet",
    log:
        "logs/catalog/concat.log",
    localrule: True
    conda:
        ENV
    shell:
        "joulebench concat catalog --output={output:q} -- {input:q} > {log:q} 2>&1"
