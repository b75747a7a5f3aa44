locals {
  account_name   = "non-prod"
  aws_account_id = "111111111111"
}
