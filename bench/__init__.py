"""The sessiontree benchmark: realistic data generated from real records, and timings."""
