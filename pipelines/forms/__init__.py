"""Forms as a service of the pipeline: surveys and answers extracted, back-filled elsewhere."""
