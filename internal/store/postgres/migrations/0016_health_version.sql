-- An environment's last health check is the setting health/TEAM/ENV (one
-- small JSON value, no table of its own); its view shows it, so writing it
-- changes the environment's version like any other write the view shows.
CREATE FUNCTION knit_bump_health_environment() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE environments SET version = version + 1 WHERE id = substr(NEW.key, 8);
    RETURN NULL;
END $$;
CREATE TRIGGER settings_health_version AFTER INSERT OR UPDATE ON settings
    FOR EACH ROW WHEN (NEW.key LIKE 'health/%') EXECUTE FUNCTION knit_bump_health_environment();
