# Sourced by the scripts in eks/scripts (not run): the settings eks/eks.mk hands them and
# terraform/tofu in eks/.

# need_setting NAME HINT: fail, naming the make setting, when NAME is empty.
need_setting() {
  if [ -z "${!1:-}" ]; then
    echo "error: $1 is not set. $2" >&2
    exit 2
  fi
}

need_setting EKS_TF "Install Terraform >= 1.5.7 or OpenTofu >= 1.6, or set EKS_TF=/path/to/terraform."
need_setting EKS_DIR "Set EKS_DIR to the eks/ directory (eks/eks.mk does)."

# tf ARGS...: terraform/tofu in eks/ (eks/eks.mk's $(EKS_TF_CMD)).
tf() {
  "$EKS_TF" -chdir="$EKS_DIR" "$@"
}
