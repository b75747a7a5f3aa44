-- The serial and lineage of a Terraform state as its last write declared
-- them (0 and '': none known, a state written by an older knit). A write
-- may not move the serial back nor change the lineage: a replayed or
-- late write of an older state is refused.
ALTER TABLE tf_states ADD COLUMN serial BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tf_states ADD COLUMN lineage TEXT NOT NULL DEFAULT '';
