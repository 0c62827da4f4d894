import ArgumentParser
import NotifiableTransfer

struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move devices in and out in bulk: import from files or notifiable-rails, export to files.",
        subcommands: [Import.self, Export.self]
    )
}

extension DeviceFileFormat: ExpressibleByArgument {}
