# The container images (images/README.md): their builds, archive and Debian base. Included by
# the root Makefile, which defines IMAGES, ALL_IMAGES and CONTAINERS_CONF.

.PHONY: images image-spark image-hive-metastore image-spark-operator image-archive base-images \
	test-images

IMAGE_ARCHIVE ?= $(CURDIR)/.logberg/images/logberg-images.tar

$(CONTAINERS_CONF):
	$(IMAGES) containers-conf $@

images: | $(CONTAINERS_CONF) ## build the Spark, Hive Metastore, spark-operator and dev backend images (skips unchanged ones)
	$(IMAGES) build $(ALL_IMAGES)

image-spark: | $(CONTAINERS_CONF) ## build images/spark (logberg-spark:<logberg version>-<input hash>)
	$(IMAGES) build spark

image-hive-metastore: | $(CONTAINERS_CONF) ## build images/hive-metastore
	$(IMAGES) build hive-metastore

image-spark-operator: | $(CONTAINERS_CONF) ## build images/spark-operator (the controller from its Go module, on the Spark image)
	$(IMAGES) build spark-operator

image-archive: images ## one archive of the images for a containerd node (IMAGE_ARCHIVE; `ctr -n k8s.io images import`)
	$(IMAGES) save $(ALL_IMAGES) -o $(IMAGE_ARCHIVE)

base-images: | $(CONTAINERS_CONF) ## make the Debian base with debootstrap, for machines without a registry (root; BASE_REBUILD=1 remakes it)
	$(IMAGES) base $(if $(BASE_REBUILD),--rebuild,)

test-images: | $(CONTAINERS_CONF) ## the images the container and cluster tests run (nothing without docker or podman)
	@IMAGES="$(IMAGES)" images/scripts/test-images.sh $(ALL_IMAGES)
