"""From the command line's paths to checked records, and from records to runs, series and GPUs."""
