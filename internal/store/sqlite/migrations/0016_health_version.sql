-- An environment's last health check is the setting health/TEAM/ENV (one
-- small JSON value, no table of its own); its view shows it, so writing it
-- changes the environment's version like any other write the view shows.
CREATE TRIGGER settings_health_insert_version AFTER INSERT ON settings WHEN NEW.key LIKE 'health/%'
BEGIN UPDATE environments SET version = version + 1 WHERE id = substr(NEW.key, 8); END;
CREATE TRIGGER settings_health_update_version AFTER UPDATE ON settings WHEN NEW.key LIKE 'health/%'
BEGIN UPDATE environments SET version = version + 1 WHERE id = substr(NEW.key, 8); END;
