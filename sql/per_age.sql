-- One row per board, variant and age: the series behind every per-age figure.
-- Shares are fractions of the states of the age; NULL where the age has no states.
SELECT
    board,
    variant,
    age,
    n_states,
    n_afterstates,
    n_terminal_states,
    CASE WHEN n_states > 0 THEN n_terminal_states::DOUBLE / n_states::DOUBLE END AS terminal_share,
    frac_gap_lt_1,
    mean_empty_cells_afterstates,
    best_afterstate_value,
    mean_state_value,
    mean_action_gap
FROM ages
ORDER BY board, variant, age;
