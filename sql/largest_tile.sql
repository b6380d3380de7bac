-- Largest tile reached per board and variant, computed from the state codes themselves
-- (used when a manifest has no max_tile). max_tile(id) is a macro defined with the views.
SELECT board, variant, max(max_tile(id))::UBIGINT AS largest_tile
FROM states
GROUP BY board, variant
ORDER BY board, variant;
