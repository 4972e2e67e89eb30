"""Test support for eks/: the Terraform read as data, its IAM policies rendered to the JSON
AWS would receive, and a MinIO server that enforces
them (tests/static/test_eks.py, tests/integration/test_eks_s3_policies.py)."""
