-- Whether a release's author is authenticated: a token created it, or
-- its commit's signature verified against keys the server trusts (its
-- author is then the signer). 0: the name an unsigned commit claims,
-- which a stage requiring another approver does not trust (two distinct
-- tokens must approve). Releases recorded before are unverified.
ALTER TABLE pipeline_releases ADD COLUMN author_verified INTEGER NOT NULL DEFAULT 0;
