package io.vgpu.k8s.deviceplugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.vgpu.k8s.codec.HamiAnnotations;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.io.FileOutputStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The node monitor's metrics, with HAMi's names and labels. */
class NodeMonitorTest {
  static final String GPU0 = "GPU-12345678-1234-1234-1234-123456780000";

  private static Pod granted(String name, String uid, String allocated) {
    return new PodBuilder()
        .withNewMetadata().withName(name).withNamespace("team").withUid(uid)
        .addToAnnotations(HamiAnnotations.ASSIGNED_NODE, "n1")
        .addToAnnotations(HamiAnnotations.DEVICES_ALLOCATED, allocated)
        .endMetadata()
        .withNewSpec().addNewContainer().withName("gpu").endContainer().endSpec()
        .withNewStatus().withPhase("Running").endStatus()
        .build();
  }

  private static String scrape(NodeMonitor monitor) throws Exception {
    PrometheusRegistry registry = new PrometheusRegistry();
    registry.register(monitor);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrometheusTextFormatWriter.create().write(out, registry.scrape());
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void aGrantedContainerIsReportedBeforeItTouchesTheGpu(@TempDir Path dir) throws Exception {
    NodeMonitor monitor =
        new NodeMonitor("n1", () -> List.of(granted("idle", "uid-idle", GPU0 + ",NVIDIA,4096,25:;")), (uid, c) -> dir.resolve(uid + "_" + c + "/vgpu.shr"),
            () -> List.of(new NodeMonitor.HostGpu(0, GPU0, "NVIDIA-NVIDIA A100-SXM4-40GB", 1L << 30, 37, 12)), Clock.systemUTC());
    String text = scrape(monitor);
    String labels = "container=\"gpu\",device_uuid=\"" + GPU0 + "\",namespace=\"team\",pod=\"idle\",vdevice_index=\"0\",zone=\"vGPU\"";
    assertThat(text)
        .contains("hami_vgpu_memory_limit_bytes{" + labels + "} 4.294967296E9")
        .contains("hami_vgpu_memory_used_bytes{" + labels + "} 0.0")
        .contains("hami_container_device_utilization_ratio{" + labels + "} 0.0")
        .contains("hami_host_gpu_utilization_ratio{device_index=\"0\",device_type=\"NVIDIA-NVIDIA A100-SXM4-40GB\",device_uuid=\"" + GPU0 + "\",node=\"n1\",zone=\"vGPU\"} 37.0")
        .contains("hami_host_gpu_memory_used_bytes{")
        .contains("hami_host_gpu_memory_controller_utilization_ratio{");
  }

  @Test
  void theDriversFigureStandsBesideTheInterposers(@TempDir Path dir) throws Exception {
    Pod pod = granted("busy", "uid-busy", GPU0 + ",NVIDIA,1024,25:;");
    NodeMonitor.DriverMemory nvml = (uid, container, uuid) ->
        uid.equals("uid-busy") && container.equals("gpu") && uuid.equals(GPU0) ? OptionalLong.of(3000L << 20) : OptionalLong.of(0);
    String text = scrape(new NodeMonitor("n1", () -> List.of(pod), (uid, c) -> dir.resolve("none"), List::of, nvml, Clock.systemUTC()));
    String labels = "container=\"gpu\",device_uuid=\"" + GPU0 + "\",namespace=\"team\",pod=\"busy\",vdevice_index=\"0\",zone=\"vGPU\"";
    assertThat(text)
        .contains("hami_vgpu_memory_used_bytes{" + labels + "} 0.0")
        .contains("hami_vgpu_memory_nvml_used_bytes{" + labels + "} 3.145728E9");

    String without = scrape(new NodeMonitor("n1", () -> List.of(pod), (uid, c) -> dir.resolve("none"), List::of, Clock.systemUTC()));
    assertThat(without).as("no NVML, no figure").doesNotContain("hami_vgpu_memory_nvml_used_bytes");
  }

  @Test
  void podsOfOtherNodesAndFinishedPodsAreLeftOut(@TempDir Path dir) throws Exception {
    Pod elsewhere = granted("elsewhere", "u1", GPU0 + ",NVIDIA,1,0:;");
    elsewhere.getMetadata().getAnnotations().put(HamiAnnotations.ASSIGNED_NODE, "n2");
    Pod done = granted("done", "u2", GPU0 + ",NVIDIA,1,0:;");
    done.getStatus().setPhase("Succeeded");
    NodeMonitor monitor = new NodeMonitor("n1", () -> List.of(elsewhere, done), (uid, c) -> dir.resolve("x"), List::of, Clock.systemUTC());
    assertThat(scrape(monitor)).doesNotContain("hami_vgpu_memory_limit_bytes");
  }

  @Test
  void theLimitReportedIsTheGrantsWhateverTheContainerWroteIntoItsRegion(@TempDir Path dir) throws Exception {
    ByteBuffer region = ByteBuffer.allocate(598016).order(ByteOrder.LITTLE_ENDIAN);
    region.putLong(0, SharedRegion.MAGIC).putInt(8, SharedRegion.VERSION).putInt(16, 16).putInt(20, 256).putLong(32, 4096);
    region.put(4096, GPU0.getBytes(StandardCharsets.US_ASCII));
    region.putLong(4096 + 96, 999L << 30); // a process of the container widened the limit words
    region.putLong(4096 + 112, 3L << 30);
    Path file = dir.resolve("uid-w_gpu/vgpu.shr");
    Files.createDirectories(file.getParent());
    Files.write(file, region.array());
    NodeMonitor monitor =
        new NodeMonitor("n1", () -> List.of(granted("w", "uid-w", GPU0 + ",NVIDIA,4096,25:;")), (uid, c) -> dir.resolve(uid + "_" + c + "/vgpu.shr"),
            List::of, Clock.systemUTC());
    String labels = "container=\"gpu\",device_uuid=\"" + GPU0 + "\",namespace=\"team\",pod=\"w\",vdevice_index=\"0\",zone=\"vGPU\"";
    assertThat(scrape(monitor))
        .contains("hami_vgpu_memory_limit_bytes{" + labels + "} 4.294967296E9")
        .contains("hami_vgpu_memory_used_bytes{" + labels + "} 3.221225472E9");
  }

  /**
   * A container can write its region's directory: whatever it leaves there under the region's name —
   * a FIFO, a symlink to a huge file, a file of the wrong size — is reported once and never stops the
   * scrape or the other containers' series.
   */
  @Test
  void whatAContainerPutsInPlaceOfItsRegionNeverBlocksOrBreaksTheScrape(@TempDir Path dir) throws Exception {
    Path big = dir.resolve("big");
    try (RandomAccessFile f = new RandomAccessFile(big.toFile(), "rw")) {
      f.setLength(3L << 30);
    }
    List<Pod> pods = new ArrayList<>();
    for (String name : List.of("fifo", "link", "short", "dir", "fine")) {
      pods.add(granted(name, "uid-" + name, GPU0 + ",NVIDIA,4096,25:;"));
      Files.createDirectories(dir.resolve("uid-" + name + "_gpu"));
    }
    Path fifo = dir.resolve("uid-fifo_gpu/vgpu.shr");
    assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
    Files.createSymbolicLink(dir.resolve("uid-link_gpu/vgpu.shr"), big);
    Files.write(dir.resolve("uid-short_gpu/vgpu.shr"), new byte[9000]);
    Files.createDirectories(dir.resolve("uid-dir_gpu/vgpu.shr"));
    List<String> reports = new ArrayList<>();
    NodeMonitor monitor =
        new NodeMonitor("n1", () -> pods, (uid, c) -> dir.resolve(uid + "_" + c + "/vgpu.shr"), List::of, Clock.systemUTC(), reports::add);
    try {
      String text = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> scrape(monitor));
      for (String name : List.of("fifo", "link", "short", "dir", "fine")) {
        assertThat(text).as(name).contains("hami_vgpu_memory_limit_bytes{container=\"gpu\",device_uuid=\"" + GPU0 + "\",namespace=\"team\",pod=\"" + name + "\"");
      }
      assertTimeoutPreemptively(Duration.ofSeconds(10), () -> scrape(monitor));
    } finally {
      // Release a reader stuck on the FIFO, should there be one.
      new Thread(() -> {
        try (FileOutputStream unblock = new FileOutputStream(fifo.toFile())) {
          unblock.flush();
        } catch (Exception ignored) {
          // nothing was waiting
        }
      }).start();
    }
    assertThat(reports).hasSize(4);
    assertThat(reports).allSatisfy(r -> assertThat(r).doesNotContain("\n"));
    assertThat(String.join("\n", reports))
        .contains("team/fifo container gpu: " + fifo + " is not a regular file")
        .contains("team/link container gpu: " + dir.resolve("uid-link_gpu/vgpu.shr") + " is a symbolic link")
        .contains("team/short container gpu: " + dir.resolve("uid-short_gpu/vgpu.shr") + " has 9000 bytes, not the region's 598016")
        .contains("team/dir container gpu: " + dir.resolve("uid-dir_gpu/vgpu.shr") + " is not a regular file");
  }

  @Test
  void aRegionBeingCreatedIsNotReported(@TempDir Path dir) throws Exception {
    Files.createDirectories(dir.resolve("u_gpu"));
    Files.write(dir.resolve("u_gpu/vgpu.shr"), new byte[0]);
    List<String> reports = new ArrayList<>();
    NodeMonitor monitor = new NodeMonitor("n1", () -> List.of(granted("p", "u", GPU0 + ",NVIDIA,4096,25:;")),
        (uid, c) -> dir.resolve(uid + "_" + c + "/vgpu.shr"), List::of, Clock.systemUTC(), reports::add);
    scrape(monitor);
    // ftruncate to full size happens before the magic is written: a zero-filled region is not read yet.
    Files.write(dir.resolve("u_gpu/vgpu.shr"), new byte[598016]);
    assertThat(scrape(monitor)).contains("hami_vgpu_memory_used_bytes{");
    assertThat(reports).isEmpty();
  }

  @Test
  void aKaiFractionContainerIsReportedUnderTheSameNamesWithItsGrantAndNvmlsFigure(@TempDir Path dir) throws Exception {
    Pod shared = new PodBuilder().withNewMetadata().withName("shared").withNamespace("team").withUid("uid-kai").endMetadata()
        .withNewSpec().addNewContainer().withName("main").endContainer().endSpec().withNewStatus().withPhase("Running").endStatus().build();
    NodeMonitor.DriverMemory nvml = (uid, container, uuid) -> uid.equals("uid-kai") && container.equals("main") ? OptionalLong.of(1024L << 20) : OptionalLong.of(0);
    String text = scrape(new NodeMonitor("n1", List::of, (uid, c) -> dir.resolve("none"), List::of, nvml, Clock.systemUTC(),
        () -> List.of(new NodeMonitor.GrantedContainer(shared, "main", List.of(new io.vgpu.api.DeviceGrant(GPU0, "NVIDIA", 20889, 0))))));
    String labels = "container=\"main\",device_uuid=\"" + GPU0 + "\",namespace=\"team\",pod=\"shared\",vdevice_index=\"0\",zone=\"vGPU\"";
    assertThat(text)
        .contains("hami_vgpu_memory_limit_bytes{" + labels + "} " + (double) (20889L << 20))
        .contains("hami_vgpu_memory_used_bytes{" + labels + "} 0.0")
        .contains("hami_vgpu_memory_nvml_used_bytes{" + labels + "} " + (double) (1024L << 20));
  }
}
