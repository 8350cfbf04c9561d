-- The sessions a running client held open on a machine's config root when that root
-- last synced (its registry, sessions/<pid>.json): pull asks before writing one of them
-- on another machine, since two clients appending to one session on two machines make
-- it diverge. Each sync of the root replaces its rows whole.
CREATE TABLE sessiontree.held_open (
  machine_id uuid        NOT NULL REFERENCES sessiontree.machine,
  root       text        NOT NULL,
  session_id text        NOT NULL,
  seen_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (machine_id, root, session_id)
);
CREATE INDEX held_open_session ON sessiontree.held_open (session_id);
