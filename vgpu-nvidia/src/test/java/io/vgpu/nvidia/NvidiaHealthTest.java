package io.vgpu.nvidia;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.Device;
import io.vgpu.api.spi.DeviceSource;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * GPU health through the mock NVML of four A100s ({@code health.list}: GPU 3 lost from the start): a
 * lost GPU and a critical Xid turn a GPU unhealthy and are reported to the watcher's listener at once;
 * an ignored Xid changes nothing. Runs in the {@code mock-health} surefire execution.
 */
@Tag("mock-health")
class NvidiaHealthTest {
  /** Longer than one wait of the watcher (1 s) plus scheduling slack. */
  private static final long SETTLE_MILLIS = 2500;

  private static MockMachine.Control control;
  private final BlockingQueue<List<Device>> changes = new LinkedBlockingQueue<>();
  private NvidiaDeviceSource source;

  @BeforeAll
  static void machine() {
    if (MockMachine.prepare()) {
      control = MockMachine.control();
    }
  }

  @BeforeEach
  void open() {
    MockMachine.assumeBuilt(Nvml.LIBRARY);
    source = new NvidiaDeviceSource(Nvml.open(), NvidiaDeviceSource.Options.DEFAULT);
  }

  @AfterEach
  void restore() {
    if (source == null) {
      return;
    }
    source.close();
    for (int i = 0; i < 3; i++) {
      control.vgpuMockSetDeviceLost(i, 0);
    }
  }

  private static boolean healthy(List<Device> devices, int index) {
    return devices.stream().filter(d -> d.index() == index).findFirst().orElseThrow().healthy();
  }

  @Test
  void aGpuLostBeforeTheStartIsUnhealthyWithoutMemory() {
    List<Device> devices = source.devices();
    assertThat(devices).extracting(Device::healthy).containsExactly(true, true, true, false);
    assertThat(devices.get(3).memoryMiB()).isZero();
    assertThat(devices.get(3).uuid()).isEqualTo(MockMachine.deviceList().get(3).get("uuid"));
    assertThat(source.lostDevices()).containsExactly(devices.get(3).uuid());
  }

  @Test
  void aGpuThatFallsOffTheBusTurnsUnhealthyAtOnce() throws InterruptedException {
    DeviceSource.Subscription watch = source.watchHealth(changes::add);
    try {
      assertThat(control.vgpuMockSetDeviceLost(1, 1)).isZero();
      List<Device> change = changes.poll(SETTLE_MILLIS, TimeUnit.MILLISECONDS);
      assertThat(change).as("a notification within %d ms", SETTLE_MILLIS).isNotNull();
      assertThat(healthy(change, 1)).isFalse();
      assertThat(healthy(change, 0)).isTrue();
      assertThat(source.devices()).isEqualTo(change);
      assertThat(source.lostDevices()).containsExactly(change.get(1).uuid(), change.get(3).uuid());
    } finally {
      watch.close();
    }
  }

  @Test
  void aCriticalXidTurnsItsGpuUnhealthyAndAnIgnoredOneDoesNot() throws InterruptedException {
    DeviceSource.Subscription watch = source.watchHealth(changes::add);
    try {
      for (long ignored : XidHealthPolicy.DEFAULT_IGNORED) {
        assertThat(control.vgpuMockRaiseXid(0, ignored)).isZero();
      }
      assertThat(control.vgpuMockRaiseXid(2, 48)).isZero(); // double-bit ECC error
      List<Device> change = changes.poll(SETTLE_MILLIS, TimeUnit.MILLISECONDS);
      assertThat(change).isNotNull();
      assertThat(healthy(change, 2)).isFalse();
      assertThat(changes.poll(SETTLE_MILLIS, TimeUnit.MILLISECONDS)).as("no second change").isNull();
      assertThat(source.devices()).extracting(Device::healthy).containsExactly(true, true, false, false);
      assertThat(source.lostDevices()).as("an Xid alone does not make a GPU lost").hasSize(1);
    } finally {
      watch.close();
    }
  }

  @Test
  void xidsTheEnvironmentDisablesAreIgnoredAndThoseItEnablesAreNot() throws InterruptedException {
    source.close();
    XidHealthPolicy policy = XidHealthPolicy.of("48", "31");
    source = new NvidiaDeviceSource(Nvml.open(), new NvidiaDeviceSource.Options(java.util.Set.of(), java.util.Set.of(), 0, Path.of("/sys"), policy));
    DeviceSource.Subscription watch = source.watchHealth(changes::add);
    try {
      control.vgpuMockRaiseXid(0, 48);
      control.vgpuMockRaiseXid(1, 31);
      List<Device> change = changes.poll(SETTLE_MILLIS, TimeUnit.MILLISECONDS);
      assertThat(change).isNotNull();
      assertThat(change).extracting(Device::healthy).containsExactly(true, false, true, false);
      assertThat(changes.poll(SETTLE_MILLIS, TimeUnit.MILLISECONDS)).isNull();
    } finally {
      watch.close();
    }
  }

  @Test
  void aClosedSubscriptionHearsNothingMore() throws InterruptedException {
    DeviceSource.Subscription watch = source.watchHealth(changes::add);
    watch.close();
    watch.close();
    control.vgpuMockRaiseXid(0, 79);
    Thread.sleep(SETTLE_MILLIS);
    assertThat(changes).isEmpty();
    assertThat(source.devices().get(0).healthy()).as("the watcher still runs for the source").isFalse();
    assertThat(source.lostDevices()).as("Xid 79 from a GPU still on the bus").doesNotContain(source.devices().get(0).uuid());
  }
}
