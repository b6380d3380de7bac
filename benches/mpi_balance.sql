-- How evenly a solve over several processes split its ages into parts:
--   age2048 sql --data DIR "SET VARIABLE dir = 'DIR'; $(cat benches/mpi_balance.sql)"
-- The processes go through the ages in lockstep, so an age takes as long as its fullest part
-- takes: `lockstep` is the sum over the ages of the fullest part's boards (states and
-- afterstates) over the sum of the mean part's (1 = even): what the split costs in time if
-- time goes with boards. `worst_of_the_big_ages` is the fullest part over the mean part at
-- the worst of the ages holding a tenth of the largest age's boards or more.
WITH boards AS (
    SELECT age, regexp_extract(filename, 'part-(\d+)\.parquet', 1) AS part
    FROM read_parquet(getvariable('dir') || '/states/*/*/*/*.parquet', filename = true, hive_partitioning = true)
    UNION ALL
    SELECT age, regexp_extract(filename, 'part-(\d+)\.parquet', 1) AS part
    FROM read_parquet(getvariable('dir') || '/afterstates/*/*/*/*.parquet', filename = true, hive_partitioning = true)
),
per_part AS (SELECT age, part, count(*) AS n FROM boards GROUP BY ALL),
n_parts AS (SELECT count(DISTINCT part) AS p FROM per_part),
per_age AS (SELECT age, sum(n) AS total, max(n) AS fullest FROM per_part GROUP BY age)
SELECT (SELECT p FROM n_parts) AS parts,
       sum(total) AS boards,
       round(sum(fullest) * (SELECT p FROM n_parts) / sum(total), 3) AS lockstep,
       round(max(fullest * (SELECT p FROM n_parts) / total) FILTER (WHERE total >= (SELECT max(total) FROM per_age) / 10), 3) AS worst_of_the_big_ages
FROM per_age;
