-- Each function's `timeout_ms_default` by function id, kept by the server beside the device's function list
-- (a stored generated column: computed for the rows there are, and again whenever `functions` changes), so a
-- call's submit reads one small value instead of parsing the whole list (issue 34: ~2.7 ms per call with the
-- agent's list). The first descriptor of an id counts, as before; a descriptor without an id is left out.
CREATE FUNCTION aios_function_timeouts(functions text) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN jsonb_typeof(functions::jsonb) = 'array' THEN (
    SELECT COALESCE(jsonb_object_agg(f.value ->> 'id', f.value -> 'timeout_ms_default' ORDER BY f.n DESC), '{}'::jsonb)
    FROM jsonb_array_elements(functions::jsonb) WITH ORDINALITY AS f(value, n)
    WHERE f.value ->> 'id' IS NOT NULL
  ) ELSE '{}'::jsonb END
$$;
ALTER TABLE bridge_devices ADD COLUMN function_timeouts jsonb GENERATED ALWAYS AS (aios_function_timeouts(functions)) STORED;
