# Common configuration of every environment's web servers.
locals {
  environment_vars = read_terragrunt_config(find_in_parent_folders("env.hcl"))
  env              = local.environment_vars.locals.environment
  base_source_url  = "git::@MODULES@//webserver-cluster"
}

terraform {
  source = "${local.base_source_url}?ref=v0.8.0"
}

dependency "mysql" {
  config_path = "${get_terragrunt_dir()}/../mysql"
  mock_outputs = {
    address = "mock-address"
  }
}

inputs = {
  name       = "webserver-${local.env}"
  db_address = dependency.mysql.outputs.address
  db_port    = dependency.mysql.outputs.port
}
