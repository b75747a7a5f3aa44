# Common configuration of every environment's database.
locals {
  environment_vars = read_terragrunt_config(find_in_parent_folders("env.hcl"))
  env              = local.environment_vars.locals.environment
  base_source_url  = "git::@MODULES@//mysql"
}

terraform {
  source = "${local.base_source_url}?ref=v0.8.0"
}

inputs = {
  name              = "mysql_${local.env}"
  instance_class    = "db.t2.micro"
  tier              = "from-envcommon"
  allocated_storage = 20
}
