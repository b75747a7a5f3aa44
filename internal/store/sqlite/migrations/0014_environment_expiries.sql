-- When each ephemeral environment (spec.ttl) expires, and the expiry its
-- ttl.expiring warning went out for, so a restart never warns twice.
CREATE TABLE environment_expiries (
    env         TEXT PRIMARY KEY,
    expires_at  TEXT NOT NULL,
    warned_for  TEXT
) STRICT;
