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
    shell:
        "python -m joulebench summary --profile {input.profile} --catalog {input.catalog} "
        "--accuracy {input.accuracy} --output {output.parquet} --csv {output.csv} > {log} 2>&1"
