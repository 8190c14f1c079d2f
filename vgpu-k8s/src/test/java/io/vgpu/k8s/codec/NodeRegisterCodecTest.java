package io.vgpu.k8s.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.SchedulableDevice;
import java.util.List;
import org.junit.jupiter.api.Test;

class NodeRegisterCodecTest {
  private static final SchedulableDevice AAA =
      new SchedulableDevice("GPU-aaa", 0, "NVIDIA A100-SXM4-80GB", 81920, 100, 10, 0, true, "hami-core");
  private static final SchedulableDevice BBB =
      new SchedulableDevice("GPU-bbb", 1, "NVIDIA A100-SXM4-80GB", 81920, 100, 10, 1, true, "hami-core");

  /** HAMi's own example of two A100-80GB cards, split 10, no scaling. */
  private static final String TWO_A100 =
      "[{\"id\":\"GPU-aaa\",\"count\":10,\"devmem\":81920,\"devcore\":100,\"type\":\"NVIDIA A100-SXM4-80GB\",\"mode\":\"hami-core\",\"health\":true},"
          + "{\"id\":\"GPU-bbb\",\"index\":1,\"count\":10,\"devmem\":81920,\"devcore\":100,\"type\":\"NVIDIA A100-SXM4-80GB\",\"numa\":1,\"mode\":\"hami-core\",\"health\":true}]";

  @Test
  void encodesInHamisFieldOrderLeavingOutZeroIndexNumaAndFalseHealth() {
    assertThat(NodeRegisterCodec.encode(List.of(AAA, BBB))).isEqualTo(TWO_A100);
    assertThat(NodeRegisterCodec.encode(List.of(AAA.withHealthy(false))))
        .isEqualTo("[{\"id\":\"GPU-aaa\",\"count\":10,\"devmem\":81920,\"devcore\":100,\"type\":\"NVIDIA A100-SXM4-80GB\",\"mode\":\"hami-core\"}]");
    assertThat(NodeRegisterCodec.encode(List.of())).isEqualTo("[]");
  }

  @Test
  void escapesStringsAsGoDoes() {
    SchedulableDevice odd = new SchedulableDevice("GPU-\"<&>\"", 0, "NVIDIA-Tesla T4", 15360, 100, 10, 0, true, "hami-core");
    assertThat(NodeRegisterCodec.encode(List.of(odd)))
        .startsWith("[{\"id\":\"GPU-\\\"\\u003c\\u0026\\u003e\\\"\",")
        .contains("\"type\":\"NVIDIA-Tesla T4\"");
  }

  @Test
  void decodesWhatItEncodes() {
    assertThat(NodeRegisterCodec.decode(TWO_A100)).containsExactly(AAA, BBB);
  }

  @Test
  void decodesMissingFieldsAsZeroEmptyOrUnhealthyAndIgnoresOthers() {
    List<SchedulableDevice> decoded =
        NodeRegisterCodec.decode(
            "[{\"id\":\"GPU-x\",\"count\":4,\"devmem\":1000,\"devcore\":100,\"type\":\"NVIDIA-Tesla T4\","
                + "\"migProfiles\":[{\"name\":\"1g.5gb\"}],\"devicevendor\":\"NVIDIA\",\"custominfo\":{\"a\":1}}]");
    assertThat(decoded).containsExactly(new SchedulableDevice("GPU-x", 0, "NVIDIA-Tesla T4", 1000, 100, 4, 0, false, ""));
  }

  @Test
  void rejectsWhatIsNotADeviceArray() {
    assertThatThrownBy(() -> NodeRegisterCodec.decode("GPU-a,10,32768,100,NVIDIA-Tesla V100,0,true:"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("not JSON");
    assertThatThrownBy(() -> NodeRegisterCodec.decode("{\"id\":\"x\"}")).hasMessageContaining("expected a JSON array");
    assertThatThrownBy(() -> NodeRegisterCodec.decode("[{\"id\":\"x\",\"devmem\":\"lots\"}]"))
        .hasMessage("device 0: field 'devmem' has invalid value \"lots\"");
    assertThatThrownBy(() -> NodeRegisterCodec.decode("[{\"id\":\"x\",\"health\":\"yes\"}]")).hasMessageContaining("'health'");
  }
}
