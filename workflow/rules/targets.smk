# One aggregate rule per target of the registry (`snakemake fig9`, `snakemake basin` ...): its panels, the tables
# they draw and the tables and files that name it (derived.target_outputs), rebuilt when any is missing.

for target in derived.targets():

    rule:
        name:
            target
        input:
            target_files(target),
        localrule: True
