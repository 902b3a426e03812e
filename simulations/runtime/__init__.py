"""Infrastructure shared by the studies: saved results, resumable cells, the executor that runs
independent tasks on local processes or a Dask cluster, progress bars and usage errors."""
