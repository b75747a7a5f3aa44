include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "envcommon" {
  path   = "${dirname(find_in_parent_folders("root.hcl"))}/_envcommon/mysql.hcl"
  expose = true
}

# The unit's own inputs win over _envcommon's, which win over root.hcl's.
inputs = {
  instance_class = "db.t2.medium"
}
