"""Demo data for a first look: the AWS example policy and its variants, traces, and studies."""
