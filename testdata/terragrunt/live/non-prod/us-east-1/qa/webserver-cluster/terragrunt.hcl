include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "envcommon" {
  path   = "${dirname(find_in_parent_folders("root.hcl"))}/_envcommon/webserver-cluster.hcl"
  expose = true
}

inputs = {
  instance_type = "t2.micro"
}
