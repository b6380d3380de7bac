-- Quantiles of the state values per age (linear interpolation between order statistics), for
-- every board and variant, with the mean the solver recorded in `ages` (summed in a fixed
-- order, so the same bits on every run). The report runs this query for the board it draws,
-- filtered on board and variant (the filter reaches the Hive partitions of the scan).
WITH q AS (
    SELECT
        board,
        variant,
        age,
        count(value)::UBIGINT                                   AS n,
        quantile_cont(value, [0.05, 0.25, 0.50, 0.75, 0.95])    AS q
    FROM states
    GROUP BY board, variant, age
)
SELECT
    q.board,
    q.variant,
    q.age,
    q.n,
    q.q[1]               AS q05,
    q.q[2]               AS q25,
    q.q[3]               AS q50,
    q.q[4]               AS q75,
    q.q[5]               AS q95,
    a.mean_state_value   AS mean
FROM q
JOIN ages AS a USING (board, variant, age)
ORDER BY board, variant, age;
