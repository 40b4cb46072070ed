"""Planning: observe the live catalogs (observe), compare them with the desired state into
operations (compare), order and check them into a plan (planner, select for --target), and
print it (render)."""
