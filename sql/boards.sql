-- One row per board and variant: totals over all ages (the counts of the boards table).
SELECT
    board,
    variant,
    sum(n_states)::UBIGINT          AS states,
    sum(n_afterstates)::UBIGINT     AS afterstates,
    sum(n_terminal_states)::UBIGINT AS terminal_states,
    max(age) FILTER (WHERE n_states > 0) AS max_age,
    count(*)::UBIGINT               AS ages
FROM ages
GROUP BY board, variant
ORDER BY board, variant;
