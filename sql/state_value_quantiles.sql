-- Quantiles of the state values per age, for every board and variant: the DuckDB reference
-- for the quantile-band figure (computed there with Polars from the same Parquet files).
SELECT
    board,
    variant,
    age,
    count(*)::UBIGINT                AS n,
    quantile_cont(value, 0.05)       AS q05,
    quantile_cont(value, 0.25)       AS q25,
    quantile_cont(value, 0.50)       AS q50,
    quantile_cont(value, 0.75)       AS q75,
    quantile_cont(value, 0.95)       AS q95,
    avg(value)                       AS mean
FROM states
GROUP BY board, variant, age
ORDER BY board, variant, age;
