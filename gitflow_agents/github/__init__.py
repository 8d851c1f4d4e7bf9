"""GitHub: the sticky summary comment, the batched inline review, the commit status that gates
merges, and the Actions entry point. Only ``client`` imports PyGithub."""
