localrules:
    figure,


# One figure of an experiment, as PNG and PDF.
rule figure:
    input:
        summary_file,
    output:
        png="results/figures/{experiment}/{figure}.png",
        pdf="results/figures/{experiment}/{figure}.pdf",
    log:
        "results/logs/figure/{experiment}-{figure}.log",
    shell:
        "attnsim figures --summary {input:q} --figure {wildcards.figure} --output {output.png:q} > {log:q} 2>&1"
