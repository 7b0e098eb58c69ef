# Stage 9: every figure of the study, PDF + PNG, registered for `snakemake --report`. A figure
# with nothing to draw is still a file (it says why), so the outputs never depend on the data;
# the manifest says which were made, and the report files the others under "Figures not made".


rule figures:
    input:
        unpack(get_figure_inputs),
    output:
        pdf=expand("results/figures/{name}.pdf", name=FIGURES),
        png=[
            report(
                f"results/figures/{name}.png",
                caption=f"../report/{name}.rst",
                category=get_figure_category(name),
                labels=get_figure_labels(name),
            )
            for name in FIGURES
        ],
        manifest=f"results/figures/{FIGURE_MANIFEST}",
    log:
        "logs/figures.log",
    localrule: True
    conda:
        ENV
    params:
        settings=get_figures_settings(),
        trace=get_trace_option,
        predicted=get_predicted_option,
        outdir=get_figures_outdir,
        fits_dir=get_fits_dir,
    shell:
        "joulebench figures --summary={input.summary:q} --scores={input.scores:q} "
        "--fits-dir={params.fits_dir:q} {params.trace} --best-configs={input.best_configs:q} "
        "{params.predicted} "
        "--settings={params.settings:q} "
        "--outdir={params.outdir:q} > {log:q} 2>&1"


# Stage 10: one self-contained HTML page (works from file://, no server, no CDN).


rule webapp:
    input:
        unpack(get_webapp_inputs),
    output:
        "results/webapp/index.html",
    log:
        "logs/webapp.log",
    localrule: True
    conda:
        ENV
    params:
        settings=get_webapp_settings(),
        predicted=get_predicted_option,
    shell:
        "joulebench webapp --summary={input.summary:q} --scores={input.scores:q} "
        "{params.predicted} --settings={params.settings:q} --output={output:q} > {log:q} 2>&1"
