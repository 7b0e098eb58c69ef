# Stage 7: one tidy table, results/summary.parquet (+ .csv), with a declared schema.


rule summary:
    input:
        profile="results/profile.parquet",
        catalog="results/catalog.parquet",
        accuracy="results/accuracy.parquet",
    output:
        parquet="results/summary.parquet",
        csv="results/summary.csv",
    log:
        "logs/summary.log",
    localrule: True
    conda:
        ENV
    params:
        boards=BOARDS_DIR,
    shell:
        "joulebench summary --profile={input.profile:q} --catalog={input.catalog:q} "
        "--accuracy={input.accuracy:q} --boards={params.boards:q} "
        "--output={output.parquet:q} --csv={output.csv:q} "
        "> {log:q} 2>&1"


# Stage 7b: every catalogued model a group did not measure, predicted with an interval checked
# on the group's measured rows (docs/predictions.md); empty where every model was measured.


rule predict:
    input:
        summary="results/summary.parquet",
        catalog="results/catalog.parquet",
    output:
        "results/predicted.parquet",
    log:
        "logs/predict.log",
    localrule: True
    conda:
        ENV
    shell:
        "joulebench predict --rows={input.summary:q} --catalog={input.catalog:q} "
        "--output={output:q} > {log:q} 2>&1"
