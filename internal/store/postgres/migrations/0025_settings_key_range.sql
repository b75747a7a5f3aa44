-- Settings are read by key prefix (GitOps reads its wants and bookkeeping
-- at every commit) as the range of keys the prefix covers, compared byte
-- by byte. The primary key's index sorts by the database's collation, in
-- which a prefix's keys need not be one range: this index sorts bytes.
CREATE INDEX settings_key_bytes ON settings (key COLLATE "C");
