-- When each ephemeral environment (spec.ttl) expires, and the expiry its
-- ttl.expiring warning went out for, so a restart never warns twice.
-- Times are nanoseconds since the Unix epoch, as everywhere in this store.
CREATE TABLE environment_expiries (
    env         TEXT PRIMARY KEY,
    expires_at  BIGINT NOT NULL,
    warned_for  BIGINT
);

-- The expiry shows in the environment's view: setting, moving or clearing
-- it moves its version; marking it warned does not.
CREATE TRIGGER environment_expiries_version AFTER INSERT OR DELETE ON environment_expiries
    FOR EACH ROW EXECUTE FUNCTION knit_bump_environment();
CREATE TRIGGER environment_expiries_update_version AFTER UPDATE OF expires_at ON environment_expiries
    FOR EACH ROW EXECUTE FUNCTION knit_bump_environment();
