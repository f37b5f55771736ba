"""The detection model that tests and benchmarks share: torchvision's SSDlite with random
weights, made so that its detections depend on the image (torch and torchvision imported by the
caller, nothing downloaded)."""


def ssdlite_with_calibrated_statistics(torch, torchvision):
    """SSDlite (MobileNetV3-Large backbone, 320x320, 5 classes), eval mode: batch-norm
    statistics taken from random images and the head drawn at random, so that scores depend on
    the image and are all distinct (untrained statistics give every anchor the same score)."""
    torch.manual_seed(0)
    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=5)
    for parameter in model.head.parameters():
        torch.nn.init.normal_(parameter, std=0.05)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.momentum = None  # a plain average over the calibration batch
            module.reset_running_stats()
    model.train()
    with torch.no_grad():
        features = model.backbone(torch.rand(4, 3, 320, 320))
        model.head(list(features.values()))
    return model.eval()


def export_ssdlite(torch, model, path, opset=13):
    """Writes `model` to `path` as ONNX: input "images" (3, 320, 320), outputs "boxes",
    "scores" and "labels" (at most 300 detections)."""
    torch.onnx.export(model, ([torch.rand(3, 320, 320)],), path, opset_version=opset,
                      input_names=["images"], output_names=["boxes", "scores", "labels"])
