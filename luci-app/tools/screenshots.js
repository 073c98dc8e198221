// screenshots.js BASE PASSWORD OUTDIR CHROMIUM — run by screenshots.sh: logs in to the real
// LuCI at BASE as root and takes luci-status.png, luci-client-qr.png, luci-interface.png
// (and luci-interface-general.png, the dialog's first tab). Needs puppeteer-core (NODE_PATH).
'use strict';
const puppeteer = require('puppeteer-core');
const [base, password, out, chromium] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

(async () => {
	const browser = await puppeteer.launch({
		executablePath: chromium,
		headless: true,
		args: [ '--no-sandbox', '--disable-gpu', '--no-proxy-server', '--lang=en-US' ]
	});
	let failed = false;
	try {
		const page = await browser.newPage();
		await page.setViewport({ width: 1280, height: 900 });
		await page.setExtraHTTPHeaders({ 'Accept-Language': 'en' });
		page.on('pageerror', (e) => { console.log('pageerror:', e.message); });
		page.on('console', (m) => { if (m.type() == 'error') console.log('console error:', m.text()); });
		page.on('response', (r) => { if (r.status() >= 400) console.log('HTTP', r.status(), r.url()); });
		globalThis.shotPage = page;

		/* the login page of luci-theme-bootstrap */
		await page.goto(base + '/cgi-bin/luci/', { waitUntil: 'networkidle0' });
		await page.type('#luci_password', password);
		await Promise.all([
			page.waitForNavigation({ waitUntil: 'networkidle0' }),
			page.click('button.cbi-button-positive')
		]);

		/* Status → solowg */
		await page.goto(base + '/cgi-bin/luci/admin/status/solowg', { waitUntil: 'networkidle0' });
		await page.waitForSelector('.solowg-interface', { timeout: 20000 });
		await sleep(6000);	/* two polls: the rate graphs have samples */
		await page.screenshot({ path: out + '/luci-status.png', fullPage: true });
		console.log('luci-status.png');

		/* the client configuration of the first peer (laptop), with its QR code */
		await page.click('.solowg-client-button');
		await page.waitForSelector('.modal svg', { timeout: 20000 });
		await sleep(1000);
		await page.screenshot({ path: out + '/luci-client-qr.png', fullPage: false });
		console.log('luci-client-qr.png');

		/* Network → Interfaces → wg0: Edit */
		await page.goto(base + '/cgi-bin/luci/admin/network/network', { waitUntil: 'networkidle0' });
		const edit = '.cbi-section-table-row[data-sid="wg0"] .cbi-button-edit';
		await page.waitForSelector(edit, { timeout: 20000 });
		await sleep(1000);
		await page.click(edit);
		await page.waitForSelector('.modal .cbi-tabmenu', { timeout: 20000 });
		await sleep(1500);
		await page.screenshot({ path: out + '/luci-interface-general.png', fullPage: false });
		const tabs = await page.$$('.modal .cbi-tabmenu > li');
		let clicked = false;
		for (const t of tabs) {
			const txt = await t.evaluate((e) => e.textContent.trim());
			if (txt == 'Peers') { await t.click(); clicked = true; break; }
		}
		if (!clicked) throw new Error('no Peers tab in the interface dialog');
		await sleep(1500);
		await page.screenshot({ path: out + '/luci-interface.png', fullPage: false });
		console.log('luci-interface.png');
	}
	catch (e) {
		console.error('screenshots.js:', e);
		if (globalThis.shotPage)
			await globalThis.shotPage.screenshot({ path: out + '/failure.png' }).catch(() => {});
		failed = true;
	}
	finally {
		await browser.close();
	}
	process.exit(failed ? 1 : 0);
})();
