include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "envcommon" {
  path   = "${dirname(find_in_parent_folders("root.hcl"))}/_envcommon/mysql.hcl"
  expose = true
}

prevent_destroy = true

inputs = {
  instance_class    = "db.r5.large"
  allocated_storage = 100
}
