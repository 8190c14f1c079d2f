package io.vgpu.k8s.kai;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** KAI's objects as KAI's scheduler, binder and reservation pods leave them, for the node agent's tests. */
final class KaiFixtures {
  static final String NODE = "n1";
  static final String GPU0 = "GPU-00000000-0000-0000-0000-000000000000";
  static final String GPU1 = "GPU-00000000-0000-0000-0000-000000000001";

  private KaiFixtures() {}

  /** A shared pod as vgpu's webhook mutated it: its container {@code main} mounts the grant volume. */
  static Pod sharedPod(String name, String uid) {
    return new PodBuilder()
        .withNewMetadata().withNamespace("team").withName(name).withUid(uid)
        .addToAnnotations(KaiKeys.GPU_MEMORY, "20480")
        .addToAnnotations(KaiKeys.SHARED_GPU_CONFIGMAP, name + "-abcdefg-shared-gpu")
        .endMetadata()
        .withNewSpec().withNodeName(NODE)
        .addNewContainer().withName("sidecar").endContainer()
        .addNewContainer().withName("main")
        .addNewVolumeMount().withName(KaiKeys.GRANT_VOLUME).withMountPath(KaiKeys.CONTAINER_GRANT_DIRECTORY).withReadOnly(true).withSubPathExpr("$(VGPU_POD_UID)_main").endVolumeMount()
        .endContainer()
        .addNewVolume().withName(KaiKeys.GRANT_VOLUME).withNewHostPath().withPath("/usr/local/vgpu/kai").withType("Directory").endHostPath().endVolume()
        .endSpec()
        .withNewStatus().withPhase("Pending").endStatus()
        .build();
  }

  /** KAI's BindRequest for {@code pod}, owned by it. */
  static GenericKubernetesResource bindRequest(Pod pod, String portion, int count, List<String> groups) {
    Map<String, Object> received = new LinkedHashMap<>();
    received.put("count", count);
    received.put("portion", portion);
    Map<String, Object> spec = new LinkedHashMap<>();
    spec.put("podName", pod.getMetadata().getName());
    spec.put("selectedNode", NODE);
    spec.put("selectedGPUGroups", groups);
    spec.put("receivedResourceType", "Fraction");
    spec.put("receivedGPU", received);
    return new GenericKubernetesResourceBuilder()
        .withApiVersion(KaiKeys.BIND_REQUEST_API_VERSION)
        .withKind("BindRequest")
        .withNewMetadata().withNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName())
        .addNewOwnerReference().withApiVersion("v1").withKind("Pod").withName(pod.getMetadata().getName()).withUid(pod.getMetadata().getUid()).endOwnerReference()
        .endMetadata()
        .addToAdditionalProperties("spec", spec)
        .build();
  }

  /** KAI's reservation pod of {@code group} on {@code node}, having reported {@code uuid} (null: not yet). */
  static Pod reservationPod(String group, String node, String uuid) {
    PodBuilder b =
        new PodBuilder()
            .withNewMetadata().withNamespace(KaiKeys.RESERVATION_NAMESPACE).withName("gpu-reservation-" + group.substring(0, 8))
            .addToLabels("app", KaiKeys.RESERVATION_NAMESPACE).addToLabels(KaiKeys.GPU_GROUP, group)
            .endMetadata()
            .withNewSpec().withNodeName(node).addNewContainer().withName("resource-reservation").endContainer().endSpec();
    if (uuid != null) {
      b.editMetadata().addToAnnotations(KaiKeys.RESERVE_FOR_GPU_INDEX, uuid).endMetadata();
    }
    return b.build();
  }
}
