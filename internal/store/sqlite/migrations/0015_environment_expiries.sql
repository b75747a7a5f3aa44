-- When each ephemeral environment (spec.ttl) expires, and the expiry its
-- ttl.expiring warning went out for, so a restart never warns twice.
CREATE TABLE environment_expiries (
    env         TEXT PRIMARY KEY,
    expires_at  TEXT NOT NULL,
    warned_for  TEXT
) STRICT;

-- The expiry shows in the environment's view: it moves its version.
CREATE TRIGGER environment_expiries_insert_version AFTER INSERT ON environment_expiries
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;
CREATE TRIGGER environment_expiries_update_version AFTER UPDATE OF expires_at ON environment_expiries
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;
CREATE TRIGGER environment_expiries_delete_version AFTER DELETE ON environment_expiries
BEGIN UPDATE environments SET version = version + 1 WHERE id = OLD.env; END;
