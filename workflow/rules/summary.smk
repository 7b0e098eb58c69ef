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
