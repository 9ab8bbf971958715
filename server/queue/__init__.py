"""Jobs claimed through the database: a job table's row operations (``job_queue``) and the loop
that claims and runs them (``claim_runner``); above ``models``, as a queue is a table's rows."""
