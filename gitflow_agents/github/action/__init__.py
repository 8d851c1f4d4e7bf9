"""The Action: a webhook event → a review (or ``/agent fix``, or a merge queue's group) →
published as a sticky comment, inline findings, a check run and the gating commit status."""
