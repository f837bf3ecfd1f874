"""The ground floor: settings, options, errors, text escaping, files, versions, the package's own resources."""
