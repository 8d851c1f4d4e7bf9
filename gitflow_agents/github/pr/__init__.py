"""Plan steps as pull requests (``run --step N --pr``): the claim, the pushed branch, the pull
request's body and history, and what is published on it."""
