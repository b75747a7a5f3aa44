locals {
  account_name   = "prod"
  aws_account_id = "222222222222"
}
