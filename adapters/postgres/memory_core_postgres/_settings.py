"""The PostgreSQL server settings a client may give in a URL's query.

asyncpg reads its connection parameters from a URL's query
(:data:`memory_core_postgres._url.DRIVER_OPTIONS`) and sends every other
one to the server as a setting of the session (``application_name``,
``statement_timeout`` ...). A name that is neither is refused by
:func:`memory_core_postgres._url.parse_url` before any I/O, with the name
meant: before, ``?prefx=abc`` reached the server, which refused the whole
connection ("unrecognized configuration parameter") as a ``BackendError``.

:data:`SERVER_SETTINGS` is PostgreSQL 16's list of the settings a session may
set when it connects: ``SELECT name FROM pg_settings WHERE context IN
('user', 'superuser', 'backend', 'superuser-backend')``, read from the
server the tests start (pgserver's PostgreSQL 16.2), less ``search_path``,
which the store sets to its schema (``?schema=`` names it). A setting added by
a later PostgreSQL, or one this list lacks, still reaches the server through
libpq's ``options`` parameter: ``?options=-c%20name%3Dvalue``. Dotted names
(``pg_trgm.similarity_threshold``: an extension's or an application's own
settings) are passed on unchecked.
"""

from __future__ import annotations

__all__ = ["SERVER_SETTINGS"]

SERVER_SETTINGS = frozenset(
    """
    DateStyle IntervalStyle TimeZone allow_in_place_tablespaces allow_system_table_mods application_name
    array_nulls backend_flush_after backslash_quote backtrace_functions bytea_output
    check_function_bodies client_connection_check_interval client_encoding client_min_messages
    commit_delay commit_siblings compute_query_id constraint_exclusion cpu_index_tuple_cost
    cpu_operator_cost cpu_tuple_cost createrole_self_grant cursor_tuple_fraction deadlock_timeout
    debug_discard_caches debug_logical_replication_streaming debug_parallel_query debug_pretty_print
    debug_print_parse debug_print_plan debug_print_rewritten default_statistics_target
    default_table_access_method default_tablespace default_text_search_config default_toast_compression
    default_transaction_deferrable default_transaction_isolation default_transaction_read_only
    dynamic_library_path effective_cache_size effective_io_concurrency enable_async_append
    enable_bitmapscan enable_gathermerge enable_hashagg enable_hashjoin enable_incremental_sort
    enable_indexonlyscan enable_indexscan enable_material enable_memoize enable_mergejoin
    enable_nestloop enable_parallel_append enable_parallel_hash enable_partition_pruning
    enable_partitionwise_aggregate enable_partitionwise_join enable_presorted_aggregate enable_seqscan
    enable_sort enable_tidscan escape_string_warning exit_on_error extra_float_digits
    from_collapse_limit geqo geqo_effort geqo_generations geqo_pool_size geqo_seed geqo_selection_bias
    geqo_threshold gin_fuzzy_search_limit gin_pending_list_limit hash_mem_multiplier
    icu_validation_level idle_in_transaction_session_timeout idle_session_timeout
    ignore_checksum_failure ignore_system_indexes jit jit_above_cost jit_debugging_support
    jit_dump_bitcode jit_expressions jit_inline_above_cost jit_optimize_above_cost jit_profiling_support
    jit_tuple_deforming join_collapse_limit lc_messages lc_monetary lc_numeric lc_time
    lo_compat_privileges local_preload_libraries lock_timeout log_connections log_disconnections
    log_duration log_error_verbosity log_executor_stats log_lock_waits log_min_duration_sample
    log_min_duration_statement log_min_error_statement log_min_messages log_parameter_max_length
    log_parameter_max_length_on_error log_parser_stats log_planner_stats log_replication_commands
    log_statement log_statement_sample_rate log_statement_stats log_temp_files
    log_transaction_sample_rate logical_decoding_work_mem maintenance_io_concurrency
    maintenance_work_mem max_parallel_maintenance_workers max_parallel_workers
    max_parallel_workers_per_gather max_stack_depth min_parallel_index_scan_size
    min_parallel_table_scan_size parallel_leader_participation parallel_setup_cost parallel_tuple_cost
    password_encryption plan_cache_mode post_auth_delay quote_all_identifiers random_page_cost
    recursive_worktable_factor row_security scram_iterations seq_page_cost session_preload_libraries
    session_replication_role standard_conforming_strings statement_timeout stats_fetch_consistency
    synchronize_seqscans synchronous_commit tcp_keepalives_count tcp_keepalives_idle
    tcp_keepalives_interval tcp_user_timeout temp_buffers temp_file_limit temp_tablespaces
    timezone_abbreviations trace_notify trace_sort track_activities track_counts track_functions
    track_io_timing track_wal_io_timing transaction_deferrable transaction_isolation
    transaction_read_only transform_null_equals update_process_title vacuum_buffer_usage_limit
    vacuum_cost_delay vacuum_cost_limit vacuum_cost_page_dirty vacuum_cost_page_hit
    vacuum_cost_page_miss vacuum_failsafe_age vacuum_freeze_min_age vacuum_freeze_table_age
    vacuum_multixact_failsafe_age vacuum_multixact_freeze_min_age vacuum_multixact_freeze_table_age
    wal_compression wal_consistency_checking wal_init_zero wal_recycle wal_sender_timeout
    wal_skip_threshold work_mem xmlbinary xmloption zero_damaged_pages
    """.lower().split()
)
"""PostgreSQL 16's session settings a connection may set, lower-cased (the
server reads names in any case; see the module notes)."""
