package io.vgpu.k8s.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.grant.GrantKey;
import io.vgpu.k8s.grant.GrantSignature;
import io.vgpu.k8s.grant.GrantVerifier;
import io.vgpu.k8s.grant.PodGrants;
import io.vgpu.nvidia.HookLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The grant the watchdog holds a container to: the agent's own limits file when it names the cards, else
 * the pod's grant (capped by a limits file without cards), else none.
 */
class ContainerGrantsTest {
  private static final long MIB = 1L << 20;
  private static final String GPU0 = "GPU-0de0a100-0000-4000-8000-000000000000";
  private static final String GPU1 = "GPU-0de0a100-0000-4000-8000-000000000001";

  @TempDir Path hook;
  ContainerGrants grants;
  Path limits;

  @BeforeEach
  void layout() throws Exception {
    grants = new ContainerGrants(new HookLayout(hook.toString()), PodGrants.unverified(), "n1");
    limits = hook.resolve("vgpu/limits");
    Files.createDirectories(limits);
  }

  /** A pod with an init container {@code setup} and containers {@code gpu} and {@code sidecar}. */
  static Pod pod(String uid, String allocated) {
    PodBuilder b = new PodBuilder().withNewMetadata().withName("p").withNamespace("team").withUid(uid).endMetadata()
        .withNewSpec().addNewInitContainer().withName("setup").endInitContainer()
        .addNewContainer().withName("gpu").endContainer().addNewContainer().withName("sidecar").endContainer().endSpec();
    if (allocated != null) {
      b.editMetadata().addToAnnotations(HamiAnnotations.DEVICES_ALLOCATED, allocated).addToAnnotations(HamiAnnotations.ASSIGNED_NODE, "n1").endMetadata();
    }
    return b.build();
  }

  private static ContainerGrants.Held held(Map<String, Long> bytes) {
    return new ContainerGrants.Held(bytes);
  }

  @Test
  void theLimitsFileWithItsCardsIsTheGrantWhateverThePodSays() throws Exception {
    Files.writeString(limits.resolve("u1_gpu"),
        "# vgpu limits of pod team/p container gpu\n# devices: " + GPU1 + "," + GPU0 + "\nCUDA_DEVICE_MEMORY_LIMIT_0=1024m\nCUDA_DEVICE_MEMORY_LIMIT_1=0\nEND\n");
    Pod edited = pod("u1", ";" + GPU0 + ",NVIDIA,40960,25:;;");
    assertThat(grants.of(edited, "gpu")).isEqualTo(held(Map.of(GPU1, 1024 * MIB, GPU0, Long.MAX_VALUE)));
    assertThat(grants.of(pod("u1", null), "gpu")).as("no annotation at all").isEqualTo(held(Map.of(GPU1, 1024 * MIB, GPU0, Long.MAX_VALUE)));
    Files.writeString(limits.resolve("u2_gpu"), "# devices: " + GPU0 + ",\nCUDA_DEVICE_MEMORY_LIMIT_0=1024m\n");
    assertThat(grants.of(pod("u2", null), "gpu")).as("a card line that cannot be read").isEqualTo(held(Map.of()));
  }

  @Test
  void aPodWithoutAGrantOrWithOneThatIsNotTheSchedulersHoldsNone() {
    assertThat(grants.of(pod("u1", null), "gpu")).isEqualTo(new ContainerGrants.Ungranted("the pod holds no GPU grant"));
    assertThat(grants.of(pod("u1", "GPU-0,NVIDIA;"), "gpu")).isInstanceOf(ContainerGrants.Ungranted.class);
    GrantKey key = GrantKey.random();
    ContainerGrants verified =
        new ContainerGrants(new HookLayout(hook.toString()), PodGrants.verified(new GrantVerifier(() -> Optional.of(key), Clock.systemUTC(), Duration.ofSeconds(10))), "n1");
    assertThat(verified.of(pod("u1", ";" + GPU0 + ",NVIDIA,1024,25:;;"), "gpu"))
        .isEqualTo(new ContainerGrants.Ungranted("its grant is not the scheduler's: the pod carries no vgpu.io/grant-signature"));
    String allocated = ";" + GPU0 + ",NVIDIA,1024,25:;;";
    Pod signed = pod("u1", allocated);
    signed.getMetadata().getAnnotations().put(GrantSignature.ANNOTATION, new GrantSignature(key).sign("u1", "n1", allocated));
    assertThat(verified.of(signed, "gpu")).isEqualTo(held(Map.of(GPU0, 1024 * MIB)));
  }

  @Test
  void theAnnotationAloneGrantsWhatItSays() {
    Pod pod = pod("u1", ";" + GPU0 + ",NVIDIA,1024,25:" + GPU1 + ",NVIDIA,2048,25:;;");
    assertThat(grants.of(pod, "gpu")).isEqualTo(held(Map.of(GPU0, 1024 * MIB, GPU1, 2048 * MIB)));
  }

  @Test
  void aLimitsFileWithoutCardsCapsAnEditedAnnotation() throws Exception {
    Files.writeString(limits.resolve("u1_gpu"), "# vgpu limits of team/p\nCUDA_DEVICE_MEMORY_LIMIT_0=1024m\nCUDA_DEVICE_MEMORY_LIMIT_1=1g\nCUDA_DEVICE_SM_LIMIT=25\n");
    Pod edited = pod("u1", ";" + GPU0 + ",NVIDIA,40960,25:" + GPU1 + ",NVIDIA,512,25:;;");
    assertThat(grants.of(edited, "gpu")).isEqualTo(held(Map.of(GPU0, 1024 * MIB, GPU1, 512 * MIB)));
  }

  @Test
  void theFilesAllDeviceLimitAndNoLimitAtAll() throws Exception {
    Files.writeString(limits.resolve("u1_gpu"), "CUDA_DEVICE_MEMORY_LIMIT = 3000m\n");
    Files.writeString(limits.resolve("u2_gpu"), "CUDA_DEVICE_SM_LIMIT=25\nCUDA_DEVICE_MEMORY_LIMIT_0=0\n");
    assertThat(grants.of(pod("u1", ";" + GPU0 + ",NVIDIA,4096,25:;;"), "gpu")).isEqualTo(held(Map.of(GPU0, 3000 * MIB)));
    assertThat(grants.of(pod("u2", ";" + GPU0 + ",NVIDIA,4096,25:;;"), "gpu")).as("0 is libvgpu's 'no limit'").isEqualTo(held(Map.of(GPU0, 4096 * MIB)));
  }

  @Test
  void aLimitsFileThatCannotBeReadGrantsNothing() throws Exception {
    Files.writeString(limits.resolve("u1_gpu"), "CUDA_DEVICE_MEMORY_LIMIT_0=lots\n");
    Files.createDirectories(limits.resolve("u2_gpu"));
    assertThat(grants.of(pod("u1", ";" + GPU0 + ",NVIDIA,4096,25:;;"), "gpu")).isEqualTo(held(Map.of()));
    assertThat(grants.of(pod("u2", ";" + GPU0 + ",NVIDIA,4096,25:;;"), "gpu")).isEqualTo(held(Map.of()));
  }

  @Test
  void aLimitsFileWithoutAReadableAnnotationGrantsNothing() throws Exception {
    Files.writeString(limits.resolve("u1_gpu"), "CUDA_DEVICE_MEMORY_LIMIT_0=1024m\n");
    assertThat(grants.of(pod("u1", null), "gpu")).isEqualTo(held(Map.of()));
    assertThat(grants.of(pod("u1", "GPU-0,NVIDIA;"), "gpu")).isEqualTo(held(Map.of()));
  }

  @Test
  void aContainerOfAGrantedPodWithoutCardsIsGovernedWithNothing() {
    Pod pod = pod("u1", ";" + GPU0 + ",NVIDIA,1024,25:;;");
    assertThat(grants.of(pod, "sidecar")).isEqualTo(held(Map.of()));
    assertThat(grants.of(pod, "setup")).isEqualTo(held(Map.of()));
    assertThat(grants.of(pod, "not-in-the-spec")).isEqualTo(held(Map.of()));
  }

  @Test
  void limitsFileSizes() {
    ContainerGrants.Limits l = ContainerGrants.Limits.parse(
        "CUDA_DEVICE_MEMORY_LIMIT_0=1073741824\nCUDA_DEVICE_MEMORY_LIMIT_1=512K\nCUDA_DEVICE_MEMORY_LIMIT_2=2G\nCUDA_DEVICE_MEMORY_LIMIT_3=1t\n# CUDA_DEVICE_MEMORY_LIMIT_4=oops\n");
    assertThat(l.readable()).isTrue();
    assertThat(l.of(0)).hasValue(1L << 30);
    assertThat(l.of(1)).hasValue(512L << 10);
    assertThat(l.of(2)).hasValue(2L << 30);
    assertThat(l.of(3)).hasValue(1L << 40);
    assertThat(l.of(4)).as("not set: no limit").hasValue(0);
    assertThat(ContainerGrants.Limits.parse("CUDA_DEVICE_MEMORY_LIMIT_0=-1m").readable()).isFalse();
    assertThat(ContainerGrants.Limits.parse("CUDA_DEVICE_MEMORY_LIMIT_0=99999999999t").readable()).isFalse();
    assertThat(ContainerGrants.Limits.parse("CUDA_DEVICE_MEMORY_LIMIT_0=1.5g").readable()).isFalse();
    assertThat(ContainerGrants.Limits.UNREADABLE.of(0)).isEmpty();
  }
}
