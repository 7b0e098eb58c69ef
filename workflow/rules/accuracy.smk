# Stages 2 and 6: prepared datasets and accuracy. Measured top-1/top-5 where a real dataset
# and local weights exist; otherwise timm's published (reference) accuracy; each value
# carries its source.


rule reference_accuracy:
    input:
        catalog="results/catalog.parquet",
    output:
        "results/accuracy/reference.parquet",
    log:
        "logs/accuracy/reference.log",
    localrule: True
    conda:
        ENV
    params:
        settings=get_reference_accuracy_settings(),
    shell:
        "joulebench reference --catalog={input.catalog:q} "
        "--settings={params.settings:q} --output={output:q} > {log:q} 2>&1"


rule prepare:
    output:
        "data/prepared/{shard}/manifest.json",
    log:
        "logs/prepare/{shard}.log",
    conda:
        ENV
    threads: config["dataset"]["workers"]
    params:
        settings=get_prepare_settings(),
        source=get_prepare_source(),
        input_config=get_shard_input_config,
        out_root=get_prepared_root,
    shell:
        "joulebench prepare --source={params.source:q} "
        "--input-config={params.input_config:q} --out-root={params.out_root:q} "
        "--settings={params.settings:q} > {log:q} 2>&1"


rule measured_accuracy:
    input:
        "data/prepared/{shard}/manifest.json",
    output:
        "results/accuracy/measured/{shard}.parquet",
    log:
        "logs/accuracy/{shard}.log",
    conda:
        ENV
    resources:
        **MEASURING,
    params:
        settings=get_measured_accuracy_settings(),
        models=get_shard_models,
        shard_dir=get_shard_dir,
    shell:
        "joulebench accuracy --shard-dir={params.shard_dir:q} "
        "--settings={params.settings:q} --output={output:q} -- {params.models} > {log:q} 2>&1"


rule accuracy:
    input:
        reference="results/accuracy/reference.parquet",
        measured=get_measured_accuracy,
    output:
        "results/accuracy.parquet",
    log:
        "logs/accuracy/combine.log",
    localrule: True
    conda:
        ENV
    shell:
        "joulebench accuracy-table --reference={input.reference:q} "
        "--output={output:q} -- {input.measured:q} > {log:q} 2>&1"
