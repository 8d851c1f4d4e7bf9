"""The base layer: helpers with no domain knowledge (errors and exit codes, crash reports,
subprocesses, files on disk, untrusted JSON and YAML, frontmatter, markdown, colour, shipped
resources, and masking secrets). Nothing here imports another layer of the package."""
